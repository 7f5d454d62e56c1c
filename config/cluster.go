package config

import (
	"context"
	"log/slog"
	"time"

	"github.com/ragfuse/ragfuse/breaker/redisstore"
	"github.com/ragfuse/ragfuse/pipeline"
)

// clusterLink is the pipeline.Cluster of a pipeline built with redis.url:
// it shares cooldowns and reloads through the redisstore.Store that also
// holds the breakers.
type clusterLink struct {
	st  *redisstore.Store
	log *slog.Logger
}

var _ pipeline.Cluster = (*clusterLink)(nil)

// ShareCooldown implements pipeline.Cluster.
func (c *clusterLink) ShareCooldown(model string, until time.Time) { c.st.ShareCooldown(model, until) }

// ShareReload implements pipeline.Cluster.
func (c *clusterLink) ShareReload(ctx context.Context, self pipeline.Member) error {
	c.st.SetMember(toStored(self))
	return c.st.RequestReload(ctx, self.ReloadID)
}

// Members implements pipeline.Cluster.
func (c *clusterLink) Members(ctx context.Context) ([]pipeline.Member, error) {
	ms, err := c.st.Members(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]pipeline.Member, len(ms))
	for i, m := range ms {
		out[i] = pipeline.Member{Instance: m.Instance, Self: m.Instance == c.st.Instance(), Version: m.Version,
			Digest: m.Digest, ReloadID: m.ReloadID, Error: m.Error, At: m.At}
	}
	return out, nil
}

// join makes p hear the cooldowns and reload requests of the other
// instances, and records p's knowledge base for them to see.
func (c *clusterLink) join(p *pipeline.Pipeline) {
	c.st.SetMember(toStored(p.KnowledgeBaseState("", nil)))
	c.st.OnCooldown(p.ApplyCooldown)
	c.st.OnReload(func(id string) {
		m := p.ReloadFromCluster(id)
		c.st.SetMember(toStored(m))
		if m.Error != "" {
			c.log.Error("knowledge base reload asked by the cluster failed", "reload_id", id, "error", m.Error)
			return
		}
		c.log.Info("knowledge base reloaded for the cluster", "reload_id", id, "version", m.Version, "digest", m.Digest)
	})
}

// toStored converts a pipeline.Member to the store's form.
func toStored(m pipeline.Member) redisstore.Member {
	return redisstore.Member{Instance: m.Instance, Version: m.Version, Digest: m.Digest, ReloadID: m.ReloadID,
		Error: m.Error, At: m.At}
}
