package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultURL is the test database used when RAGFUSE_TEST_REDIS_URL is unset.
const DefaultURL = "redis://127.0.0.1:6379/15"

// FlushMarkerTTL is how long the database stays unflushed after a test run
// flushed it.
const FlushMarkerTTL = 15 * time.Minute

// flushOnce flushes the database if no test run did so recently.
const flushOnce = `if redis.call("EXISTS", KEYS[1]) == 0 then
  redis.call("FLUSHDB")
  redis.call("SET", KEYS[1], "1", "EX", ARGV[1])
  return 1
end
return 0`

var flushed sync.Once

// URL returns the test database's URL.
func URL() string {
	if u := os.Getenv("RAGFUSE_TEST_REDIS_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Required reports whether tests must fail, rather than skip, without Redis.
func Required() bool { return os.Getenv("RAGFUSE_REQUIRE_REDIS") != "" }

// Client returns a client of the test database, flushed once per test run,
// closed when t ends. It skips t (or fails it when Required) if Redis
// cannot be reached.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(URL())
	if err != nil {
		t.Fatalf("RAGFUSE_TEST_REDIS_URL: invalid URL")
	}
	opt.ContextTimeoutEnabled = true
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		if Required() {
			t.Fatalf("redis unreachable and RAGFUSE_REQUIRE_REDIS is set: %v", err)
		}
		t.Skipf("redis unreachable (set RAGFUSE_REQUIRE_REDIS=1 to fail instead): %v", err)
	}
	flushed.Do(func() {
		err = c.Eval(ctx, flushOnce, []string{"ragfuse-test:flushed"}, int(FlushMarkerTTL/time.Second)).Err()
	})
	if err != nil {
		t.Fatalf("flushing the test database: %v", err)
	}
	return c
}

// Prefix returns a key prefix unique to t and this run.
func Prefix(t testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.NewReplacer("/", "-", " ", "_", ":", "-").Replace(t.Name())
	return "test:" + name + ":" + hex.EncodeToString(b[:])
}

// Server is a private redis-server process on a loopback port.
type Server struct {
	t    testing.TB
	Port int
	mu   sync.Mutex // guards cmd
	cmd  *exec.Cmd
}

// StartServer starts a redis-server without persistence on a free port and
// stops it when t ends. Without a redis-server binary it skips t (fails it
// when Required).
func StartServer(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if Required() {
			t.Fatalf("redis-server not found and RAGFUSE_REQUIRE_REDIS is set")
		}
		t.Skip("redis-server not found")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s := &Server{t: t, Port: port}
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// URL returns the server's URL.
func (s *Server) URL() string { return "redis://127.0.0.1:" + strconv.Itoa(s.Port) + "/0" }

// Start starts the server (again) and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting redis-server: %v", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.Port), 100*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on port %d does not answer: %v", s.Port, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Kill kills the server at once, as a crash would.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}
