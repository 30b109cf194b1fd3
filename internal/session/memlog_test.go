package session_test

import (
	"testing"

	"github.com/pifleet/sessionlog/internal/enginetest"
	"github.com/pifleet/sessionlog/internal/session"
)

func TestMemLog(t *testing.T) {
	enginetest.TestLog(t, func(t *testing.T) (session.Log, session.Feed) {
		l := session.NewMemLog(1000, 8<<20)
		return l, l
	})
}

func TestMemCursors(t *testing.T) {
	enginetest.TestCursors(t, func(t *testing.T) session.Cursors { return session.NewMemCursors() })
}
