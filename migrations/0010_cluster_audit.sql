ALTER TABLE `audit_log` ADD `node` text;--> statement-breakpoint
ALTER TABLE `audit_log` ADD `stream_seq` integer;--> statement-breakpoint
CREATE UNIQUE INDEX `audit_log_node_stream_seq` ON `audit_log` (`node`,`stream_seq`);