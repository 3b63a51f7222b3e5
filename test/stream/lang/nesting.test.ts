import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load.ts';
import { parseEdn } from '../../../src/stream/lang/edn.ts';
import { StreamEngine } from '../../../src/stream/engine/engine.ts';
import { eventsFromJsonBody } from '../../../src/stream/ingest/json.ts';
import { decodeOtlpTraces } from '../../../src/stream/ingest/otlp.ts';
import {
  DEFAULT_MAX_EVENT_DEPTH,
  MAX_EDN_DEPTH_LIMIT,
  MAX_EVENT_DEPTH_LIMIT,
} from '../../../src/stream/lang/nesting.ts';

const nestedObject = (depth: number): unknown => (depth === 0 ? 1 : { a: nestedObject(depth - 1) });
const otlp = (depth: number) => {
  let value: unknown = { stringValue: 'x' };
  for (let i = 0; i < depth; i++) value = { arrayValue: { values: [value] } };
  return Buffer.from(
    JSON.stringify({
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'deep', value }] },
          scopeSpans: [{ spans: [{ traceId: '00', spanId: '00', name: 's' }] }],
        },
      ],
    }),
  );
};

describe('nesting limits from the config', () => {
  it('are read from streams.max-edn-depth and streams.max-event-depth, with defaults and bounds', () => {
    expect(parseConfigText('', null).streams.nesting).toEqual({ ednDepth: 200, eventDepth: 32 });
    expect(parseConfigText('streams:\n  max-edn-depth: 50\n  max-event-depth: 8\n', null).streams.nesting).toEqual({
      ednDepth: 50,
      eventDepth: 8,
    });
    expect(() => parseConfigText('streams:\n  max-event-depth: 1000\n', '/etc/vigie.yaml')).toThrow(
      /^\/etc\/vigie\.yaml: streams\.max-event-depth: /,
    );
    expect(() => parseConfigText('streams:\n  max-edn-depth: 0\n', '/etc/vigie.yaml')).toThrow(
      /^\/etc\/vigie\.yaml: streams\.max-edn-depth: /,
    );
  });

  it('a lower limit refuses EDN, JSON events and OTLP attribute values past it, naming the limit and the key', () => {
    expect(() => parseEdn(`${'['.repeat(11)}${']'.repeat(11)}`, 10)).toThrow(
      'collections nest deeper than the limit of 10 levels (streams.max-edn-depth)',
    );
    expect(parseEdn(`${'['.repeat(10)}${']'.repeat(10)}`, 10)).toBeInstanceOf(Array);
    expect(eventsFromJsonBody({ events: [{ host: 'a', deep: nestedObject(3) }] }, 4)).toHaveLength(1);
    expect(() => eventsFromJsonBody({ events: [{ host: 'a', deep: nestedObject(4) }] }, 4)).toThrow(
      'events[0].deep nests objects and arrays deeper than the limit of 4 levels (streams.max-event-depth)',
    );
    expect(
      decodeOtlpTraces(otlp(4), 'application/json', undefined, { maxDecompressedBytes: 1e6, eventDepth: 4 }),
    ).toHaveLength(1);
    expect(() =>
      decodeOtlpTraces(otlp(5), 'application/json', undefined, { maxDecompressedBytes: 1e6, eventDepth: 4 }),
    ).toThrow(
      'an attribute value nests arrays and kvlists deeper than the limit of 4 levels (streams.max-event-depth)',
    );
    // The limit is the caller's: the same events under the default are accepted.
    expect(
      eventsFromJsonBody({ events: [{ host: 'a', deep: nestedObject(4) }] }, DEFAULT_MAX_EVENT_DEPTH),
    ).toHaveLength(1);
    expect(
      decodeOtlpTraces(otlp(5), 'application/json', undefined, {
        maxDecompressedBytes: 1e6,
        eventDepth: DEFAULT_MAX_EVENT_DEPTH,
      }),
    ).toHaveLength(1);
  });

  it('at the largest allowed values, a stream config that deep compiles and runs, and such events are indexed, without overflowing the stack', () => {
    // The outer map, then two levels per action, the innermost holding the :index action and its params.
    const actions = MAX_EDN_DEPTH_LIMIT / 2 - 3;
    const engine = new StreamEngine({ nesting: { ednDepth: MAX_EDN_DEPTH_LIMIT } });
    engine.add(
      'deep',
      `{:actions ${'{:action :sdo :children ['.repeat(actions)}{:action :index :params [[:host]]}${']}'.repeat(actions)}}`,
    );
    const events = eventsFromJsonBody(
      { events: [{ host: 'a', time: 1, deep: nestedObject(MAX_EVENT_DEPTH_LIMIT - 1) }] },
      MAX_EVENT_DEPTH_LIMIT,
    );
    expect(engine.push('deep', events).errorCount).toBe(0);
    expect(engine.index('deep')?.size).toBe(1);
  });

  it("the EDN depth belongs to each reader: two engines with different limits, or a read with none, never see each other's", () => {
    const config = (depth: number) =>
      `{:actions ${'{:action :sdo :children ['.repeat(depth)}{:action :info}${']}'.repeat(depth)}}`;
    const strict = new StreamEngine({ nesting: { ednDepth: 10 } });
    const loose = new StreamEngine({ nesting: { ednDepth: 500 } });
    const byDefault = new StreamEngine();
    expect(() => strict.add('deep', config(5))).toThrow(
      'collections nest deeper than the limit of 10 levels (streams.max-edn-depth)',
    );
    loose.add('deep', config(200));
    expect(() => byDefault.add('deep', config(200))).toThrow(
      'collections nest deeper than the limit of 200 levels (streams.max-edn-depth)',
    );
    byDefault.add('deep', config(5));
    expect(() => strict.add('deep', config(5))).toThrow('limit of 10 levels');
    // An owner changing its limits in place (a reload) changes its engine's, and nobody else's.
    const owned = { ednDepth: 10 };
    const reloaded = new StreamEngine({ nesting: owned });
    expect(() => reloaded.add('deep', config(5))).toThrow('limit of 10 levels');
    owned.ednDepth = 20;
    reloaded.add('deep', config(5));
    expect(() => strict.add('deep', config(5))).toThrow('limit of 10 levels');
    expect(parseEdn(`${'['.repeat(150)}${']'.repeat(150)}`)).toBeInstanceOf(Array);
  });
});
