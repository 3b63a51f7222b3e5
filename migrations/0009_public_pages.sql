CREATE TABLE `healthcheck_first_seen` (
	`name` text PRIMARY KEY NOT NULL,
	`at_ms` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `incidents` ADD `impact` text;