import { describe, expect, it } from 'vitest';
import { agentClass, redirectInterceptor, undici } from '../../src/common/undici.ts';

// HTTP checks take undici's Agent and redirect interceptor from the package's own files, not its index
// (src/common/undici.ts): they must be the very objects the index exports, or a dispatcher built from one and
// used through the other (domain checks share HTTP checks' Agents) would break.
describe('undici in parts', () => {
  it('gives the same Agent and redirect interceptor as the index', () => {
    const whole = undici();
    expect(agentClass()).toBe(whole.Agent);
    expect(redirectInterceptor()).toBe(whole.interceptors.redirect);
  });
});
