/**
 * The render cache of public status-page answers (src/healthcheck/status-pages/render-cache.ts) is bounded in bytes,
 * keys included: answers keyed by a request's host (summary.json, the feed) with made-up `Host` headers of a few
 * hundred bytes and a tiny page would otherwise fill memory through the keys alone.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RenderCache } from '../../../src/healthcheck/status-pages/render-cache.ts';

describe('render cache', () => {
  it('counts the keys in its bound: long keys with tiny answers empty it', () => {
    let renders = 0;
    const cache = new RenderCache(() => 60_000, new Registry(), Date.now, 10_000);
    const render = () => {
      renders++;
      return 'x';
    };
    const host = (i: number) => `https://evil-${i}.example/${'h'.repeat(1_000)}`;
    cache.get('summary.json', host(0), render);
    expect(cache.get('summary.json', host(0), render)).toBe('x');
    expect(renders).toBe(1);
    // About 2 KB a key: the tenth does not fit beside the first nine, which are forgotten.
    for (let i = 1; i < 10; i++) cache.get('summary.json', host(i), render);
    cache.get('summary.json', host(0), render);
    expect(renders).toBe(11);
  });

  it('serves again within the period and renders after it', () => {
    let now = 0;
    let renders = 0;
    const cache = new RenderCache(
      () => 5_000,
      new Registry(),
      () => now,
    );
    const render = () => `body ${++renders}`;
    expect(cache.get('page', 'prod', render)).toBe('body 1');
    now = 4_999;
    expect(cache.get('page', 'prod', render)).toBe('body 1');
    now = 5_000;
    expect(cache.get('page', 'prod', render)).toBe('body 2');
  });
});
