CREATE TABLE `runtime_state` (
	`kind` text NOT NULL,
	`key` text NOT NULL,
	`value` text NOT NULL,
	`updated_at_ms` integer NOT NULL,
	PRIMARY KEY(`kind`, `key`)
);
