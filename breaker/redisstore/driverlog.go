package redisstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// SetDriverLogger sends the go-redis client's own messages (one per failed
// dial, among others) to l at Debug level instead of the standard logger,
// so that an outage is reported by the store's single warning rather than
// by a line per reconnection attempt. The setting is process-wide, as the
// go-redis logger is; call it once, at start, from the main package.
func SetDriverLogger(l *slog.Logger) {
	redis.SetLogger(driverLogger{l})
}

// driverLogger adapts a slog.Logger to the go-redis logging interface.
type driverLogger struct{ l *slog.Logger }

func (d driverLogger) Printf(ctx context.Context, format string, v ...any) {
	d.l.DebugContext(ctx, "redis driver: "+strings.TrimSpace(fmt.Sprintf(format, v...)))
}
