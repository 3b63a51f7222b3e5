CREATE TABLE `stream_checkpoints` (
	`round` integer PRIMARY KEY NOT NULL,
	`format_version` integer NOT NULL,
	`journal_seq` integer NOT NULL,
	`journal_offset` integer NOT NULL,
	`committed_at_s` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `stream_state` (
	`stream` text NOT NULL,
	`path` text NOT NULL,
	`fork_key` text NOT NULL,
	`round` integer NOT NULL,
	`action` text NOT NULL,
	`config_hash` text NOT NULL,
	`state` text,
	PRIMARY KEY(`stream`, `path`, `fork_key`, `round`)
);
