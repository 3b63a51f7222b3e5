CREATE TABLE `healthcheck_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`at_ms` integer NOT NULL,
	`from_state` text NOT NULL,
	`to_state` text NOT NULL,
	`message` text NOT NULL,
	`node` text
);
--> statement-breakpoint
CREATE INDEX `healthcheck_events_name_at` ON `healthcheck_events` (`name`,`at_ms`);--> statement-breakpoint
CREATE INDEX `healthcheck_events_at` ON `healthcheck_events` (`at_ms`);--> statement-breakpoint
CREATE TABLE `healthcheck_pauses` (
	`name` text PRIMARY KEY NOT NULL,
	`paused_by` text NOT NULL,
	`reason` text NOT NULL,
	`at_ms` integer NOT NULL,
	`until_ms` integer
);
--> statement-breakpoint
ALTER TABLE `healthcheck_results` ADD `state` text;--> statement-breakpoint
ALTER TABLE `healthcheck_results` ADD `state_since_ms` integer;--> statement-breakpoint
ALTER TABLE `healthcheck_results` ADD `state_streak` integer DEFAULT 0 NOT NULL;