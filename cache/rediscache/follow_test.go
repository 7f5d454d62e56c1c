package rediscache

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ragfuse/ragfuse/breaker/redisstore/redistest"
	"github.com/ragfuse/ragfuse/cache"
)

func TestReadNoticesTrim(t *testing.T) {
	rdb := redistest.Client(t)
	s, c, err := New(Config{Client: rdb, Prefix: redistest.Prefix(t), OpTimeout: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	emb := cache.NewHashEmbedder(cache.DefaultHashDim)
	for i := range 20 {
		q := fmt.Sprintf("question %d about item %d", i, i*7)
		v, _ := emb.Embed(context.Background(), []string{q})
		if err := c.Put("acme", q, v[0], cache.Entry{Text: q}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	deadline := time.Now().Add(5 * time.Second)
	for s.ShareStatus().Written < 20 {
		if time.Now().After(deadline) {
			t.Fatal("entries not written")
		}
		time.Sleep(2 * time.Millisecond)
	}
	all, err := rdb.XRange(ctx, s.keys.stream(), "-", "+").Result()
	if err != nil || len(all) != 20 {
		t.Fatalf("stream: %d entries, %v", len(all), err)
	}
	if err := rdb.XTrimMaxLen(ctx, s.keys.stream(), 5).Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		last   string
		behind bool
		n      int
	}{
		{"read up to the first kept", all[15].ID, false, 4},
		{"the last read was trimmed: cannot tell", all[14].ID, true, 0},
		{"missed trimmed entries", all[3].ID, true, 0},
		{"nothing read yet", "0-0", false, 5},
		{"read everything", all[19].ID, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs, behind, err := s.readWith(ctx, tc.last, 10*time.Millisecond)
			if err != nil || behind != tc.behind || len(msgs) != tc.n {
				t.Fatalf("read(%s) = %d entries, behind %v, %v; want %d, %v", tc.last, len(msgs), behind, err, tc.n, tc.behind)
			}
		})
	}
}

func TestIDBefore(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"1-0", "2-0", true}, {"2-0", "1-5", false}, {"5-1", "5-2", true}, {"5-2", "5-2", false}, {"10-0", "9-0", false},
	} {
		if got := idBefore(tc.a, tc.b); got != tc.want {
			t.Errorf("idBefore(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}
