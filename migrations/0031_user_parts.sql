-- A copy of each user's parts in the user's row (users.parts, src/db/schema/users.ts), kept by the
-- triggers below whenever a part is written, so that a User object is one row read (docs/edge.md
-- "Rows per request"). Every statement that writes a part is in one transaction with its triggers:
-- the copy is never behind the rows. Users from before this migration keep parts NULL until the
-- retention job copies them (50,000 an hour, src/jobs/retention.ts); until then they are read
-- from the parts' tables as before.
ALTER TABLE `users` ADD `parts` text;--> statement-breakpoint
CREATE INDEX `users_parts_missing_idx` ON `users` (`id`) WHERE `parts` IS NULL;--> statement-breakpoint
CREATE TRIGGER `users_parts_on_insert` AFTER INSERT ON `users`
BEGIN
  UPDATE `users` SET `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = NEW.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_emails_insert` AFTER INSERT ON `user_emails`
BEGIN
  UPDATE `users` SET `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = NEW.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_emails_delete` AFTER DELETE ON `user_emails`
BEGIN
  UPDATE `users` SET `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = OLD.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_emails_update` AFTER UPDATE ON `user_emails`
BEGIN
  UPDATE `users` SET `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` IN (OLD.`user_id`, NEW.`user_id`);
END;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_phone_numbers_insert` AFTER INSERT ON `user_phone_numbers`
BEGIN
  UPDATE `users` SET `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = NEW.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_phone_numbers_delete` AFTER DELETE ON `user_phone_numbers`
BEGIN
  UPDATE `users` SET `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = OLD.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_phone_numbers_update` AFTER UPDATE ON `user_phone_numbers`
BEGIN
  UPDATE `users` SET `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` IN (OLD.`user_id`, NEW.`user_id`);
END;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_addresses_insert` AFTER INSERT ON `user_addresses`
BEGIN
  UPDATE `users` SET `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = NEW.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_addresses_delete` AFTER DELETE ON `user_addresses`
BEGIN
  UPDATE `users` SET `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = OLD.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_addresses_update` AFTER UPDATE ON `user_addresses`
BEGIN
  UPDATE `users` SET `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` IN (OLD.`user_id`, NEW.`user_id`);
END;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_accounts_insert` AFTER INSERT ON `user_accounts`
BEGIN
  UPDATE `users` SET `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = NEW.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_accounts_delete` AFTER DELETE ON `user_accounts`
BEGIN
  UPDATE `users` SET `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = OLD.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_accounts_update` AFTER UPDATE ON `user_accounts`
BEGIN
  UPDATE `users` SET `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` IN (OLD.`user_id`, NEW.`user_id`);
END;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_connections_insert` AFTER INSERT ON `user_clients`
BEGIN
  UPDATE `users` SET `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = NEW.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_connections_delete` AFTER DELETE ON `user_clients`
BEGIN
  UPDATE `users` SET `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = OLD.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_connections_update` AFTER UPDATE OF `client_id`, `merchant_id`, `user_id` ON `user_clients`
BEGIN
  UPDATE `users` SET `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` IN (OLD.`user_id`, NEW.`user_id`);
END;--> statement-breakpoint
-- The retention job's copy of a user from before this migration: it sets `parts` to 'copy', and
-- this trigger writes the copy in its place, so that the copy is written by this file alone.
CREATE TRIGGER `users_parts_on_request` AFTER UPDATE OF `parts` ON `users` WHEN NEW.`parts` = 'copy'
BEGIN
  UPDATE `users` SET `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = NEW.`id`;
END;
