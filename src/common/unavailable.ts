/**
 * A refusal for now: something this node relies on beyond itself (its cluster: NATS, the other members) cannot
 * serve the request at the moment, and the client should retry. Every part's routes answer it with 503 in their
 * own body shape (src/server/errors.ts), and the event inputs treat it as a batch not taken (src/stream/ingest/
 * submit.ts). It lives here, outside every part, so that the cluster can throw it and the healthcheck and stream
 * parts can answer it without importing each other or the cluster (docs/architecture.md, "Ports").
 */
export class UnavailableError extends Error {}
