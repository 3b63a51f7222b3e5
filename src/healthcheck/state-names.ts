/**
 * The names of the states of a check (docs/checks.md, "States"), in a leaf module: the state machine, the metrics and
 * the wire types (which the dashboard imports) share them.
 */
export const CHECK_STATES = ['up', 'pending', 'down', 'degraded', 'paused', 'maintenance'] as const;
export type CheckState = (typeof CHECK_STATES)[number];
