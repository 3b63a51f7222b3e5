import { describe, expect, it } from 'vitest';
import { compileCondition } from '../../../src/stream/lang/condition.ts';
import { parseEdn } from '../../../src/stream/lang/edn.ts';
import { IndexStore, indexLabels } from '../../../src/stream/index-store.ts';
import { engineWith, s } from '../stream-harness.ts';

const all = compileCondition(parseEdn('[:always-true]'));

describe('index', () => {
  it('keeps the latest event per label values, ignores timeless events, and removes on expired state', () => {
    const engine = engineWith({ s: '{:actions {:action :index :params [[:host :service]]}}' });
    engine.push('s', [
      { host: 'a', service: 'x', time: 1, metric: 1 },
      { host: 'a', service: 'x', time: 2, metric: 2 },
      { host: 'a', service: 'y', time: 3 },
      { host: 'b', time: 4 },
      { host: 'c' },
    ]);
    const index = engine.index('s') as IndexStore;
    expect(index.size).toBe(3);
    expect(index.currentTime).toBe(4);
    expect(index.search(compileCondition(parseEdn('[:= :service "x"]'))).events).toEqual([
      { host: 'a', service: 'x', time: 2, metric: 2 },
    ]);
    engine.push('s', [{ host: 'a', service: 'y', time: 5, state: 'expired' }]);
    expect(index.size).toBe(2);
    expect(index.currentTime).toBe(5);
  });

  it('label order does not matter and values of different types do not collide', () => {
    const index = new IndexStore();
    index.insert({ host: 'a', service: 'x', time: 1 }, indexLabels([['host'], ['service']]));
    index.insert({ host: 'a', service: 'x', time: 2 }, indexLabels([['service'], ['host']]));
    index.insert({ host: 1, time: 3 } as never, indexLabels([['host']]));
    index.insert({ host: '1', time: 4 }, indexLabels([['host']]));
    expect(index.size).toBe(3);
  });

  it('snapshot and restore carry the entries and the current time', () => {
    const index = new IndexStore();
    index.insert({ host: 'a', time: 10 }, indexLabels([['host']]));
    index.insert({ host: 'b', time: 20 }, indexLabels([['host']]));
    const snapshot = JSON.parse(JSON.stringify(index.snapshot()));
    const restored = new IndexStore();
    restored.restore(snapshot);
    expect(restored.currentTime).toBe(20);
    expect(restored.search(all).events).toEqual([
      { host: 'a', time: 10 },
      { host: 'b', time: 20 },
    ]);
    restored.insert({ host: 'a', time: 30 }, indexLabels([['host']]));
    expect(restored.size).toBe(2);
  });
});

describe('reaper', () => {
  it('expires entries older than their ttl (seconds) at the index clock and re-injects them as expired', () => {
    const engine = engineWith({
      s: `{:actions {:action :sdo :children [{:action :index :params [[:host]]}
                                             {:action :reaper :params ["10s" nil]}
                                             {:action :where :params [[:= :state "expired"]] :children [{:action :tap :params [:expired]}]}]}}`,
    });
    engine.push('s', [
      { host: 'old', time: s(0), ttl: 30 },
      { host: 'fresh', time: s(100) },
      { host: 'short', time: s(95), ttl: 4 },
    ]);
    expect(engine.taps().get('expired')).toEqual([{ host: 'old', time: s(0), ttl: 30, state: 'expired' }]);
    engine.push('s', [{ host: 'fresh', time: s(110) }]);
    expect(engine.taps().get('expired')).toEqual([
      { host: 'old', time: s(0), ttl: 30, state: 'expired' },
      { host: 'short', time: s(95), ttl: 4, state: 'expired' },
    ]);
    expect(engine.index('s')?.search(all).events).toEqual([{ host: 'fresh', time: s(110) }]);
  });

  it('runs at most once per interval of event time and can re-inject into another stream', () => {
    const engine = engineWith({
      s: '{:actions {:action :sdo :children [{:action :index :params [[:host]]} {:action :reaper :params [60000000000 :alerts]}]}}',
      alerts: '{:actions {:action :tap :params [:alerts]}}',
    });
    engine.push('s', [{ host: 'a', time: s(100), ttl: 1 }]);
    engine.push('s', [{ host: 'b', time: s(130) }]);
    expect(engine.taps().get('alerts')).toBeUndefined();
    engine.push('s', [{ host: 'b', time: s(160) }]);
    expect(engine.taps().get('alerts')).toEqual([{ host: 'a', time: s(100), ttl: 1, state: 'expired' }]);
  });
});

describe('index entry cap', () => {
  it('keeps updating known keys at the cap and reports each new key it refuses', () => {
    let full = 0;
    const index = new IndexStore({ maxEntries: 2, onFull: () => full++ });
    const labels = indexLabels([['host']]);
    for (const host of ['a', 'b', 'c', 'a', 'd']) index.insert({ host, time: 1, metric: host === 'a' ? 2 : 1 }, labels);
    expect(index.size).toBe(2);
    expect(full).toBe(2);
    expect(index.search(() => true).events).toEqual([
      { host: 'a', time: 1, metric: 2 },
      { host: 'b', time: 1, metric: 1 },
    ]);
    expect(index.search(() => true, 1)).toEqual({ events: [{ host: 'a', time: 1, metric: 2 }], truncated: true });
  });
});
