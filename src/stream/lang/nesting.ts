/**
 * Nesting limits of what clients send (docs/configuration.md, `streams.max-edn-depth` and
 * `streams.max-event-depth`; docs/hardening.md): so that nothing that walks a value (the EDN reader, the stream
 * and condition compilers, conditions on events, outputs, snapshots) recurses without bound, and past a limit
 * the request is a 400 naming the limit and its key. Both travel with each read, and nothing here is
 * process-wide: `parseEdn` takes the EDN depth, and the event decoders (`eventsFromJsonBody`, `decodeOtlpTraces`,
 * the journal's `eventsOf`) take the event depth from their caller. The stream service holds its own limits
 * (`StreamService.nesting`, updated in place at reload) for the engine, the stream files, the API, the websocket
 * queries, the HTTP inputs and the journal replay; a cluster node's readers of the event log, checkpoints, search
 * answers and forwarded emissions read them from the StreamHost (src/stream/partition/placement.ts). So two services,
 * or a `vigie test` run, never see each other's.
 */

/** A stream config needs two levels per action (`{:children [...]}`): 200 allows 100 actions deep. */
export const DEFAULT_MAX_EDN_DEPTH = 200;
/** Objects and arrays inside a pushed event (JSON), or arrays and kvlists inside an OTLP attribute value. */
export const DEFAULT_MAX_EVENT_DEPTH = 32;
/** The largest values the config accepts: the compilers and the event walkers recurse once or a few times per
 *  level, and these stay well inside Node's default stack. */
export const MAX_EDN_DEPTH_LIMIT = 1_000;
export const MAX_EVENT_DEPTH_LIMIT = 100;

export interface NestingLimits {
  ednDepth: number;
  eventDepth: number;
}
