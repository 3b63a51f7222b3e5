/**
 * A cluster node's inputs (docs/cluster.md, "Streams"): their events go to the cluster's event log once this node has
 * joined; before, there is nowhere to put them, and the inputs answer 503 (ClusterUnavailableError) so that senders
 * retry.
 */
import type { Event } from '../../stream/event.ts';
import type { EventIngest, IngestOutcome, StreamHost } from '../../stream/partition/placement.ts';
import { ClusterUnavailableError } from '../errors.ts';
import type { ClusterEventLog } from './stream-log.ts';

/** The inputs' seam: the event log once this node has joined, a 503 before. */
export class JoiningIngest implements EventIngest {
  constructor(
    private readonly log: () => ClusterEventLog | null,
    private readonly service: StreamHost,
  ) {}

  submit(target: string, events: Event[], input: string): Promise<IngestOutcome> | 'full' {
    const log = this.log();
    if (log === null)
      return Promise.reject(
        new ClusterUnavailableError(
          'this node has not joined its cluster yet (NATS unreachable): its events would have nowhere to go; retry',
        ),
      );
    return log.submit(target, events, input);
  }

  get pending(): number {
    return this.log()?.pending ?? 0;
  }

  get maxPending(): number {
    return this.service.maxPendingEvents;
  }

  set maxPending(value: number) {
    const log = this.log();
    if (log !== null) log.maxPending = value;
  }
}
