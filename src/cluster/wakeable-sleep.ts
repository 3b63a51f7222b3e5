/**
 * The wait of a publishing pump (the audit log's, the results'): it sleeps until there is something to send or a
 * retry is due, and whoever hands it work, or a reconnection, or a stop, wakes it at once.
 */
export class WakeableSleep {
  private waking: (() => void) | null = null;

  /** Until `wake` is called, or `ms` have passed (never, when null). */
  sleep(ms: number | null): Promise<void> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | null = null;
      const done = () => {
        if (timer !== null) clearTimeout(timer);
        if (this.waking === done) this.waking = null;
        resolve();
      };
      if (ms !== null) timer = setTimeout(done, ms);
      this.waking = done;
    });
  }

  /** Ends the sleep under way, if any. */
  wake(): void {
    this.waking?.();
  }
}
