package secrets

import (
	"crypto/rand"
	"encoding/base64"
)

// Token is 32 random bytes (256 bits) in unpadded base64url: a bearer
// token that survives headers, URLs and environment variables as it is.
func Token() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Password is a random password of letters and digits only (26
// characters, 130 bits): NATS passwords go into URLs
// (nats://user:password@host), where @ : / or % would need escaping.
func Password() string {
	return rand.Text()
}
