/**
 * Nesting limits of what clients send (docs/configuration.md, `streams.max-edn-depth` and
 * `streams.max-event-depth`; docs/hardening.md): so that nothing that walks a value (the EDN reader, the stream
 * and condition compilers, conditions on events, outputs, snapshots) recurses without bound, and past a limit
 * the request is a 400 naming the limit and its key. The EDN depth travels with each read: `parseEdn` takes it,
 * and the stream service holds its own (`StreamService.nesting`, updated at reload) for the engine, the stream
 * files, the API and the websocket queries, so that two services, or a `vigie test` run, never see each other's.
 * The event depth is still process-wide (`setEventDepthLimit`, set by the stream part at startup and at each
 * reload): the cluster's wire checks read it too.
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

/** The event depth every event decoder reads (see above). */
export const nesting: { readonly eventDepth: number } = { eventDepth: DEFAULT_MAX_EVENT_DEPTH };

export function setEventDepthLimit(eventDepth: number): void {
  (nesting as { eventDepth: number }).eventDepth = eventDepth;
}
