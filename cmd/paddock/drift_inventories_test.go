package main

import (
	"errors"
	"sync"
	"testing"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/engine"
)

// One drift --all reads each stack's state once, however many stacks ask
// for it at once; what a stack appends to its inventory never reaches
// another's; an error is the stack's each time it is asked for.
func TestInventoriesReadEachStackOnce(t *testing.T) {
	var mu sync.Mutex
	reads := map[string]int{}
	read := func(name string) ([]drift.ObjectRef, []engine.PendingOperation, error) {
		mu.Lock()
		reads[name]++
		mu.Unlock()
		if name == "broken" {
			return nil, nil, errors.New("corrupt")
		}
		objs := make([]drift.ObjectRef, 1, 8) // room to append in place
		objs[0] = drift.ObjectRef{Kind: "Namespace", Name: "agents-" + name}
		return objs, nil, nil
	}
	inv := &inventories{}
	stacks := []string{"a", "b", "c", "broken"}
	var wg sync.WaitGroup
	for range 8 {
		for _, self := range stacks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mine, err := inv.of(self, read)
				if self == "broken" {
					if err == nil {
						t.Error("the broken stack's error was lost")
					}
					return
				}
				mine = append(mine, drift.ObjectRef{Kind: "ConfigMap", Name: "of-" + self})
				for _, other := range stacks {
					objs, err := inv.of(other, read)
					if other == "broken" {
						continue
					}
					if err != nil || len(objs) != 1 || objs[0].Name != "agents-"+other {
						t.Errorf("%s reads %s as %v, %v", self, other, objs, err)
					}
					if cap(objs) != len(objs) {
						t.Errorf("%s's inventory has room to append in place: another stack's append would write into it", other)
					}
				}
				if len(mine) != 2 || mine[0].Name != "agents-"+self {
					t.Errorf("%s: %v", self, mine)
				}
			}()
		}
	}
	wg.Wait()
	for _, s := range stacks {
		if reads[s] != 1 {
			t.Errorf("stack %s read %d times", s, reads[s])
		}
	}
	// Without a cache (one stack's drift), every call reads.
	var none *inventories
	none.of("a", read)
	none.of("a", read)
	if reads["a"] != 3 {
		t.Errorf("without a cache: %d reads of a", reads["a"])
	}
}
