/**
 * What the console says while it waits or when something failed: the loading line, and a failure told at once to a
 * screen reader too (role alert).
 */

/** A failure, `<prefix>: <message>` when a prefix says what failed; nothing without one. */
export function Failure({ message, prefix }: { message: string | undefined; prefix?: string }) {
  if (message === undefined) return null;
  return (
    <p class="error" role="alert">
      {prefix === undefined ? message : `${prefix}: ${message}`}
    </p>
  );
}

/** The line a list shows while there is nothing to show: loading, or why it cannot load. */ export function Status({
  error,
  what,
}: {
  error: string | undefined;
  what: string;
}) {
  return error === undefined ? (
    <p class="loading">Loading {what}…</p>
  ) : (
    <Failure message={error} prefix={`Cannot load ${what}`} />
  );
}
