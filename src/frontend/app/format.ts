/** How values read on the page: relative times, durations, percentages. */

export function ago(seconds: number): string {
  if (seconds < 0) seconds = 0;
  if (seconds < 60) return `${Math.floor(seconds)} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86_400)} d ago`;
}

export function dateTime(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toLocaleString();
}

export function percent(ratio: number | null): string {
  if (ratio === null) return '–';
  const value = ratio * 100;
  return `${value === 100 || value === 0 ? value.toFixed(0) : value.toFixed(2)} %`;
}

export function milliseconds(value: number): string {
  return value < 10 ? `${Math.round(value * 10) / 10} ms` : `${Math.round(value)} ms`;
}

/** Stream time (epoch nanoseconds) as a date, or a dash before the first event. */
export function streamTime(ns: number): string {
  return ns === 0 ? '–' : new Date(ns / 1e6).toLocaleString();
}

/** Any event field as text: strings as they are, the rest as JSON. */
export function fieldText(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}
