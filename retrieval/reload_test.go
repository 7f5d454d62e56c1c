package retrieval_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ragfuse/ragfuse/retrieval"
)

func TestReloadBumpsVersion(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.md"), "---\nid: a\ntitle: Refunds\n---\nRefunds take 3 days.")
	kb, err := retrieval.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "a.md"), "---\nid: a\ntitle: Refunds\n---\nRefunds take 5 days.")
	write(t, filepath.Join(dir, "b.md"), "---\nid: b\ntitle: Invoices\n---\nInvoices are emailed.")
	if err := kb.Reload(); err != nil {
		t.Fatal(err)
	}
	if kb.Version() != 2 || kb.Len() != 2 {
		t.Fatalf("after Reload: Version %d, Len %d; want 2, 2", kb.Version(), kb.Len())
	}
	if a, _ := kb.Get("a"); a.Text != "Refunds take 5 days." {
		t.Errorf("a.Text = %q, want the new text", a.Text)
	}
	docs, _ := kb.Retrieve(context.Background(), "invoice", 1)
	if len(docs) != 1 || docs[0].ID != "b" {
		t.Errorf("new document not searchable: %v", ids(docs))
	}
}

func TestFailedReloadKeepsOldDocuments(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.md"), "---\nid: a\n---\nRefunds take 3 days.")
	kb, err := retrieval.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "b.md"), "---\nid: a\n---\nA duplicate id.")
	if err := kb.Reload(); err == nil {
		t.Fatal("Reload succeeded over a duplicate id")
	}
	if kb.Version() != 1 || kb.Len() != 1 {
		t.Errorf("after failed Reload: Version %d, Len %d; want 1, 1", kb.Version(), kb.Len())
	}
	docs, err := kb.Retrieve(context.Background(), "refund", 1)
	if err != nil || len(docs) != 1 || docs[0].ID != "a" {
		t.Errorf("Retrieve after failed reload = %v, %v", ids(docs), err)
	}
	write(t, filepath.Join(dir, "b.md"), "---\nid: b\n---\nFixed.")
	if err := kb.Reload(); err != nil || kb.Version() != 2 {
		t.Errorf("Reload after fix = %v, Version %d; want nil, 2", err, kb.Version())
	}
}

// TestRetrieveDuringReload runs questions while the knowledge base reloads
// (under -race). Every answer must come from one consistent snapshot: the
// returned documents all carry the same generation marker.
func TestRetrieveDuringReload(t *testing.T) {
	dir := t.TempDir()
	writeGen := func(gen int) {
		for i := range 20 {
			write(t, filepath.Join(dir, fmt.Sprintf("d%02d.md", i)),
				fmt.Sprintf("---\nid: d%02d\ntitle: gen%d\n---\nrefund policy article %d generation gen%d", i, gen, i, gen))
		}
	}
	writeGen(0)
	kb, err := retrieval.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	const reloads = 20
	var wg sync.WaitGroup
	var stop atomic.Bool
	var searches atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				docs, err := kb.Retrieve(context.Background(), "refund policy", 20)
				if err != nil || len(docs) != 20 {
					t.Errorf("Retrieve = %d docs, %v", len(docs), err)
					return
				}
				for _, d := range docs {
					if d.Title != docs[0].Title {
						t.Errorf("mixed snapshots in one answer: %q and %q", d.Title, docs[0].Title)
						return
					}
				}
				searches.Add(1)
				_ = kb.Version()
				_ = kb.Docs()
			}
		}()
	}
	for gen := 1; gen <= reloads; gen++ {
		writeGen(gen)
		if err := kb.Reload(); err != nil {
			t.Error(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if kb.Version() != reloads+1 {
		t.Errorf("Version = %d, want %d", kb.Version(), reloads+1)
	}
	if d, _ := kb.Get("d00"); d.Title != fmt.Sprintf("gen%d", reloads) {
		t.Errorf("after reloads title = %q", d.Title)
	}
	t.Logf("%d searches during %d reloads", searches.Load(), reloads)
}

func TestConcurrentReloads(t *testing.T) {
	kb, err := retrieval.New(smallDocs)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := kb.Reload(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if kb.Version() != 9 {
		t.Errorf("Version = %d after 8 reloads, want 9", kb.Version())
	}
}
