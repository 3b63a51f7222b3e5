#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=32 --no-sparkplug
// bin/vigie.js for the nodes of a cluster (docs/cluster.md, "Running a node"): the same service, with V8's young
// generation up to 32 MB a semi-space rather than 8. A cluster node's scavenges each cost it three to four times
// what a single node's do, at every young generation size tried, so fewer of them is what counts: under event load
// a node spent 9 % less CPU an event with 32 (docs/performance.md, "Cluster: a node's young generation"). A single
// node keeps 8, where its ingest and its memory are best. `--heap-growing-percent` is left to V8 here, as a cluster
// node does itself when started with bin/vigie.js (src/cluster/part.ts).
await import('./vigie.js');
