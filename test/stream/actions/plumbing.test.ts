import { describe, expect, it } from 'vitest';
import { StreamEngine } from '../../../src/stream/engine/engine.ts';
import type { Emission, Event } from '../../../src/stream/event.ts';
import { engineWith, run } from '../stream-harness.ts';

describe('plumbing actions', () => {
  it('sdo sends to every child in order', () => {
    expect(
      run('{:action :sdo :children [{:action :tap :params [:out]} {:action :tap :params [:out]}]}', [{ metric: 1 }]),
    ).toEqual([{ metric: 1 }, { metric: 1 }]);
  });

  it('io drops everything in test mode and forwards otherwise', () => {
    const config = '{:actions {:action :io :children [{:action :output! :params [:sink]}]}}';
    expect(run('{:action :io :children [{:action :tap :params [:out]}]}', [{ metric: 1 }])).toEqual([]);
    const sent: Emission[] = [];
    const engine = new StreamEngine({
      outputs: { has: (name) => name === 'sink', send: (_name, emission) => sent.push(emission) },
    });
    engine.add('s', config);
    engine.push('s', [{ metric: 1 }]);
    expect(sent).toEqual([{ metric: 1 }]);
  });

  it('exception-stream sends the error event of a failure below its first child to its second child', () => {
    const out = run(
      `{:action :exception-stream
        :children [{:action :sdo :children [{:action :from-json :params [:payload]}]}
                   {:action :tap :params [:out]}]}`,
      [
        { time: 5, payload: '{"ok":1}' },
        { time: 7, payload: '{not json' },
      ],
    );
    expect(out).toHaveLength(1);
    const event = out[0] as Event;
    expect(event).toMatchObject({
      time: 7,
      name: 'mirabelle-exception',
      state: 'error',
      metric: 1,
      tags: ['exception', 'SyntaxError'],
      'base-event': { time: 7, payload: '{not json' },
    });
    expect(event.description).toMatch(/JSON/);
  });

  it('exception-stream: errors are not push failures, but are still counted', () => {
    const counted: [string, boolean][] = [];
    const engine = engineWith(
      { s: '{:actions {:action :exception-stream :children [{:action :increment} {:action :tap :params [:caught]}]}}' },
      { observer: { error: (stream, _error, handled) => counted.push([stream, handled]) } },
    );
    const result = engine.push('s', [{ host: 'a' }]);
    expect(result.errors).toEqual([]);
    expect(counted).toEqual([['s', true]]);
    expect(engine.taps().get('caught')).toHaveLength(1);
  });

  it('reinject! pushes into another stream, into the current one with nil, and to default streams', () => {
    const engine = engineWith({
      entry: `{:actions {:action :sdo :children [
                {:action :where :params [[:= :stage "again"]] :children [{:action :tap :params [:again]}]}
                {:action :where :params [[:nil? :stage]]
                 :children [{:action :with :params [{:stage "again"}] :children [{:action :reinject! :params [nil]}]}
                            {:action :reinject! :params [:other]}
                            {:action :reinject! :params [:default]}]}]}}`,
      other: '{:actions {:action :tap :params [:other]}}',
      d1: '{:actions {:action :tap :params [:d1]} :default true}',
    });
    engine.push('entry', [{ metric: 1 }]);
    expect(engine.taps().get('again')).toEqual([{ metric: 1, stage: 'again' }]);
    expect(engine.taps().get('other')).toEqual([{ metric: 1 }]);
    expect(engine.taps().get('d1')).toEqual([{ metric: 1 }]);
  });

  it('reinject! into an unknown stream is an error of the push; a loop is stopped', () => {
    const engine = engineWith({
      s: '{:actions {:action :reinject! :params [:nowhere]}}',
      l: '{:actions {:action :reinject! :params [nil]}}',
    });
    expect(engine.push('s', [{}]).errors[0]?.error.message).toBe('Stream :nowhere not found');
    const loop = engine.push('l', [{}]);
    expect(loop.errorCount).toBe(1);
    expect(loop.errors[0]?.error.message).toMatch(/reinject! nested more than 64 times/);
  });

  it('async-queue! runs its children synchronously in test mode, like sdo', () => {
    expect(
      run('{:action :async-queue! :params [:q] :children [{:action :tap :params [:out]}]}', [{ metric: 1 }]),
    ).toEqual([{ metric: 1 }]);
  });

  it('tap records only in test mode; info/debug/error log with the stream name', () => {
    const logged: unknown[] = [];
    const log = (object: object) => logged.push(object);
    const engine = new StreamEngine({ logger: { debug: log, info: log, error: log } });
    engine.add(
      's',
      '{:actions {:action :sdo :children [{:action :tap :params [:t]} {:action :info} {:action :publish! :params [:chan]}]}}',
    );
    engine.push('s', [{ metric: 1 }]);
    expect(engine.taps().size).toBe(0);
    expect(logged).toEqual([{ stream: 's', event: { metric: 1 } }]);
  });

  it('output! sends to the named output, which must exist', () => {
    const sent: [string, Emission][] = [];
    const engine = new StreamEngine({
      outputs: { has: (name) => name === 'file', send: (name, emission) => sent.push([name, emission]) },
    });
    engine.add('s', '{:actions {:action :output! :params [:file]}}');
    engine.push('s', [{ metric: 3 }]);
    expect(sent).toEqual([['file', { metric: 3 }]]);
    expect(() => engine.add('t', '{:actions {:action :output! :params [:other]}}')).toThrow('Output :other not found');
  });
});
