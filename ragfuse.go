package ragfuse

import "embed"

// KnowledgeBaseDir is the folder of KnowledgeBase that holds the articles,
// for retrieval.OpenFS(ragfuse.KnowledgeBase, ragfuse.KnowledgeBaseDir).
const KnowledgeBaseDir = "testdata/kb"

// KnowledgeBase is the demo's knowledge base: the customer-service articles
// of a fictional online shop (returns, shipping, payment, invoices,
// accounts, membership, warranty), in Chinese and English, compiled into
// the binary so that `ragfuse serve` without a config works from any
// directory. It is read-only and safe for concurrent use.
//
//go:embed testdata/kb
var KnowledgeBase embed.FS
