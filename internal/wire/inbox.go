package wire

import "strings"

// InboxPrefix is user's inbox prefix (nats.CustomInboxPrefix): "_I." and
// the name as one subject token, each "." written "~" (no user name has a
// "~"), so that no user's prefix is another's or inside it. Replies to
// user's requests, JetStream's included, go there, and only user may
// subscribe to it (internal/natsauth's permissions): on the shared
// _INBOX.> any user read every other's. It lives here, not in natsauth,
// so that the clients that set it link no users-file code.
func InboxPrefix(user string) string {
	return "_I." + strings.ReplaceAll(user, ".", "~")
}
