package redisstore_test

import (
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker/redisstore"
	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
)

func TestDriverLogsAtDebug(t *testing.T) {
	rec := &redistest.Log{}
	redisstore.SetDriverLogger(slog.New(rec))
	defer redisstore.SetDriverLogger(slog.Default())

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	st, err := redisstore.New(redisstore.Config{URL: "redis://" + addr, OpTimeout: 2 * time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Healthy() {
		t.Fatal("healthy without a server")
	}
	out := rec.All()
	if rec.Level(slog.LevelDebug) == 0 || !strings.Contains(out, "redis driver: ") || rec.Level(slog.LevelWarn) != 0 {
		t.Fatalf("driver logs:\n%s", out)
	}
}
