CREATE TABLE `audit_log` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`at_ms` integer NOT NULL,
	`principal` text NOT NULL,
	`address` text NOT NULL,
	`method` text NOT NULL,
	`route` text NOT NULL,
	`path` text NOT NULL,
	`name` text,
	`outcome` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_log_at_ms` ON `audit_log` (`at_ms`);