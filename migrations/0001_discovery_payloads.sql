CREATE TABLE `discovery_payloads` (
	`source` text PRIMARY KEY NOT NULL,
	`payload` text NOT NULL,
	`fetched_at_s` integer NOT NULL
);
