package node

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/seal"
)

// keys is encryption at rest, from --encryption-key-file (and, during a
// rotation, --previous-encryption-key-file): the secrets, and the ring the
// Stores seal their snapshot and spill blocks with. The zero value is
// encryption off.
type keys struct {
	current, previous []byte
	store             *seal.Ring
}

func (c *Config) checkEncryption() error {
	switch {
	case c.PreviousEncryptionKeyFile != "" && c.EncryptionKeyFile == "":
		return errors.New("--previous-encryption-key-file is read during a rotation to --encryption-key-file: give both")
	case c.EncryptionCipher != "" && c.EncryptionCipher != "chachapoly" && c.EncryptionCipher != "aes":
		return fmt.Errorf("--encryption-cipher %q: want chachapoly or aes", c.EncryptionCipher)
	case c.EncryptionCipher != "" && c.EncryptionKeyFile == "":
		return errors.New("--encryption-cipher needs --encryption-key-file")
	}
	return nil
}

// loadKeys reads the key files; errors name the flag and the file.
func (c *Config) loadKeys() (keys, error) {
	var k keys
	if c.EncryptionKeyFile == "" {
		return k, nil
	}
	var err error
	if k.current, err = seal.ReadKeyFile(c.EncryptionKeyFile); err != nil {
		return k, fmt.Errorf("--encryption-key-file: %w", err)
	}
	var prev [][]byte
	if c.PreviousEncryptionKeyFile != "" {
		if k.previous, err = seal.ReadKeyFile(c.PreviousEncryptionKeyFile); err != nil {
			return k, fmt.Errorf("--previous-encryption-key-file: %w", err)
		}
		prev = append(prev, k.previous)
	}
	k.store, err = seal.NewRing(seal.UseStore, k.current, prev...)
	return k, err
}

// encryptServer turns on the embedded server's file store encryption:
// every stream, bucket and Raft log it writes. With a previous key, the
// server re-encrypts what that key encrypted when it starts.
func (k keys) encryptServer(s *embedded.Server, cipher string) {
	if k.current == nil {
		return
	}
	s.EncryptionKey = seal.JetStreamKey(k.current)
	if k.previous != nil {
		s.PreviousEncryptionKey = seal.JetStreamKey(k.previous)
	}
	s.Cipher = server.ChaCha
	if cipher == "aes" {
		s.Cipher = server.AES
	}
}

// removePlainIndex removes a search index written before encryption was
// turned on: it holds the text, and the encrypted node keeps its index in
// memory.
func removePlainIndex(dir string, log *slog.Logger) {
	if _, err := os.Stat(dir); err != nil {
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		log.Warn("an unencrypted search index cannot be removed", "dir", dir, "err", err)
		return
	}
	_ = os.Remove(dir + ".lock")
	log.Info("removed the unencrypted search index: encryption at rest is on (the index is rebuilt in memory)", "dir", dir)
}

// checkClusterStore refuses, before the embedded server starts, what
// nats-server (2.15) cannot do to a cluster member's data dir, and would
// fail on with "message authentication failed": encrypt a data dir
// written in the clear, or rotate its key with a previous key (the meta
// layer's log opens with the current key only). A cluster does both
// through a backup restored into a cluster started with the key
// (docs/OPERATIONS.md, encryption at rest); a single server does both in
// place.
func (c *Config) checkClusterStore() error {
	if c.ClusterName == "" {
		return nil
	}
	meta := filepath.Join(c.DataDir, "jetstream", "$SYS", "_js_", "_meta_")
	if _, err := os.Stat(meta); err != nil {
		return nil // a new member: nothing to convert
	}
	_, err := os.Stat(filepath.Join(meta, "meta.key"))
	keyed := err == nil
	const how = "move the cluster's data instead: pi-ctl backup, a cluster started with the key on empty data dirs, pi-ctl restore (docs/OPERATIONS.md, encryption at rest)"
	switch {
	case c.EncryptionKeyFile != "" && !keyed:
		return fmt.Errorf("--encryption-key-file: %s was written without encryption, and nats-server cannot encrypt a cluster member's data dir in place: %s", c.DataDir, how)
	case c.EncryptionKeyFile == "" && keyed:
		return fmt.Errorf("%s is encrypted: start this node with its --encryption-key-file", c.DataDir)
	case c.PreviousEncryptionKeyFile != "":
		return fmt.Errorf("--previous-encryption-key-file: nats-server cannot rotate a cluster member's key in place (its meta layer's log opens with the current key only): %s", how)
	}
	return nil
}
