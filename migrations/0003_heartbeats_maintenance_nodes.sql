CREATE TABLE `heartbeat_reports` (
	`name` text PRIMARY KEY NOT NULL,
	`reported_at_ms` integer NOT NULL,
	`success` integer NOT NULL,
	`message` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `maintenance_windows` (
	`name` text PRIMARY KEY NOT NULL,
	`definition` text NOT NULL,
	`created_at_s` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `healthcheck_history` ADD `maintenance` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `healthcheck_history` ADD `node` text;--> statement-breakpoint
ALTER TABLE `healthcheck_results` ADD `maintenance` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `healthcheck_results` ADD `node` text;