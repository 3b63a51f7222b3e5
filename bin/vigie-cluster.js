#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --min-semi-space-size=8 --max-semi-space-size=32 --no-sparkplug
// bin/vigie.js for the nodes of a cluster (docs/cluster.md, "Running a node"): the same service, with V8's young
// generation from 8 MB a semi-space up to 32, where a single node's grows up to 8. A cluster node's scavenges each
// cost it three to four times what a single node's do, at every young generation size tried, so fewer of them is
// what counts: under event load a node spent 9 % less CPU an event with 32 (bench/JOURNAL.md, "Cluster: a node's
// young generation"). A single node keeps 8, where its ingest and its memory are best. `--heap-growing-percent` is
// left to V8 here, as a cluster node does itself when started with bin/vigie.js (src/cluster/part.ts).
import { setFlagsFromString } from 'node:v8';

// The young generation stays at 8 MB, loading the service included (which alone grew it to 32 MB, kept for
// minutes): the cluster part lets it grow past that only while stream partitions run on the node
// (src/cluster/young-generation.ts). Set here, before the service loads: V8 did not hold to this flag given on the
// command line, and does when it is set at run time.
setFlagsFromString('--semi-space-growth-factor=1');
await import('./vigie.js');
