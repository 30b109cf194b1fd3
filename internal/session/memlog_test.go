package session_test

import (
	"testing"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/session/sessiontest"
)

func TestMemLog(t *testing.T) {
	sessiontest.TestLog(t, func(t *testing.T) (session.Log, session.Feed) {
		l := session.NewMemLog(1000, 8<<20)
		return l, l
	})
}

func TestMemCursors(t *testing.T) {
	sessiontest.TestCursors(t, func(t *testing.T) session.Cursors { return session.NewMemCursors() })
}
