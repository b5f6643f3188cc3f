// Package converge is the converge loop: what Paddock does on the live
// cluster itself, beside Pulumi's runs, to bring it to the declared objects
// and keep it there.
//
// In the flow spec → model → policy → manifests → components → engine →
// verify it sits under the engine, which alone calls it (engine → converge,
// never back): the engine runs Pulumi, holds the stack's lock, fence and run
// journal, and decides when; converge does the work on the cluster:
//
//   - compares every declared object (manifests.Build) whole with the live
//     one, as the API server stores it (compare.go), with the stack's cache
//     of stored forms (stored.go) and the run's own creations (created.go),
//     each paired with its resource in the stack's checkpoint (plan.go,
//     checkpoint.go): the fast path of a no-op up and of drift, and the
//     repair after Pulumi's update;
//   - repairs what was changed out of band, writing each drifted object
//     whole (repair.go), keeping what trusted admission adds
//     (admission_readd.go);
//   - prunes what a dead run created that no state holds, and waits for
//     what a killed destroy left being deleted (prune.go);
//   - destroys a platform's objects directly, layer by layer
//     (destroyplan.go, directdelete.go).
//
// It keeps no state between calls; the cache of stored forms is a file the
// engine names.
package converge
