/** What SQLite keeps of a check's state beside its latest result (result-writer.ts), read back at startup. */
import type { Health } from './machine.ts';

/** What the latest result's row keeps of its check's state (src/healthcheck/states/machine.ts). */
export interface StoredHealth {
  health: Health;
  sinceMs: number;
  streak: number;
}

/** A check's stored state, read back at startup with what its latest result was. */
export interface StoredState extends StoredHealth {
  name: string;
  maintenance: boolean;
  timestampS: number;
  message: string;
}
