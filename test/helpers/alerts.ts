/** What a local webhook receiver got from the notifiers of alerts (test/e2e/alerts*.test.ts). */
import type { HttpTarget } from './targets.ts';

export interface Told {
  status: 'firing' | 'resolved';
  group: Record<string, string>;
  checks: { name: string; state: string; previous: string; message: string; since: string; ack_url: string | null }[];
  ack_url: string | null;
}

/** The notifications a receiver got, parsed. */
export function told(receiver: HttpTarget): Told[] {
  return receiver.requests
    .filter((request) => request.path === '/hook')
    .map((request) => JSON.parse(request.body) as Told);
}

export function about(notifications: Told[], check: string, status?: string): Told[] {
  return notifications.filter(
    (one) => one.checks.some((c) => c.name === check) && (status === undefined || one.status === status),
  );
}
