CREATE TABLE `healthcheck_history` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`success` integer NOT NULL,
	`timestamp_s` integer NOT NULL,
	`duration_ms` integer NOT NULL,
	`message` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `healthcheck_history_name_id` ON `healthcheck_history` (`name`,`id`);--> statement-breakpoint
CREATE TABLE `healthcheck_results` (
	`name` text PRIMARY KEY NOT NULL,
	`success` integer NOT NULL,
	`timestamp_s` integer NOT NULL,
	`duration_ms` integer NOT NULL,
	`message` text NOT NULL,
	`summary` text NOT NULL,
	`labels` text,
	`source` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `healthcheck_uptime` (
	`name` text NOT NULL,
	`granularity` text NOT NULL,
	`period_start_s` integer NOT NULL,
	`runs` integer NOT NULL,
	`successes` integer NOT NULL,
	`duration_total_ms` integer NOT NULL,
	`duration_min_ms` integer NOT NULL,
	`duration_max_ms` integer NOT NULL,
	PRIMARY KEY(`name`, `granularity`, `period_start_s`)
);
--> statement-breakpoint
CREATE TABLE `healthchecks` (
	`name` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`source` text NOT NULL,
	`definition` text NOT NULL,
	`created_at_s` integer NOT NULL,
	`updated_at_s` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `index_meta` (
	`stream` text PRIMARY KEY NOT NULL,
	`current_time_ns` integer NOT NULL,
	`config_hash` text NOT NULL,
	`saved_at_s` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `index_snapshots` (
	`stream` text NOT NULL,
	`key` text NOT NULL,
	`event` text NOT NULL,
	PRIMARY KEY(`stream`, `key`),
	FOREIGN KEY (`stream`) REFERENCES `index_meta`(`stream`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `streams` (
	`name` text PRIMARY KEY NOT NULL,
	`config_edn` text NOT NULL,
	`is_default` integer NOT NULL,
	`persist` integer NOT NULL,
	`created_at_s` integer NOT NULL,
	`updated_at_s` integer NOT NULL
);
