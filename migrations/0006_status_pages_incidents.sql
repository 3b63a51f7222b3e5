CREATE TABLE `incident_updates` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`incident_id` integer NOT NULL,
	`status` text NOT NULL,
	`message` text NOT NULL,
	`at_ms` integer NOT NULL,
	FOREIGN KEY (`incident_id`) REFERENCES `incidents`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `incident_updates_incident_id` ON `incident_updates` (`incident_id`,`id`);--> statement-breakpoint
CREATE TABLE `incidents` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`title` text NOT NULL,
	`status` text NOT NULL,
	`pages` text NOT NULL,
	`checks` text NOT NULL,
	`created_at_ms` integer NOT NULL,
	`updated_at_ms` integer NOT NULL,
	`resolved_at_ms` integer
);
--> statement-breakpoint
CREATE INDEX `incidents_updated_at_ms` ON `incidents` (`updated_at_ms`);--> statement-breakpoint
CREATE TABLE `status_pages` (
	`slug` text PRIMARY KEY NOT NULL,
	`definition` text NOT NULL,
	`created_at_s` integer NOT NULL,
	`updated_at_s` integer NOT NULL
);
