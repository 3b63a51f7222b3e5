CREATE TABLE `api_tokens` (
	`name` text PRIMARY KEY NOT NULL,
	`sha256` text NOT NULL,
	`scopes` text NOT NULL,
	`created_at_s` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_tokens_sha256_unique` ON `api_tokens` (`sha256`);