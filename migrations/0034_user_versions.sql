-- A version for each user (users.version, src/db/schema/users.ts), so that an isolate can tell
-- whether its copy of a user is current from the version alone (docs/edge.md "A User object is one
-- row"). Whatever changes a user's row changes the version to a random value in the same
-- transaction: the parts' triggers (migration 0031, made again below) in the very statement that
-- rewrites the copy of the parts, and any other update of the row through users_version_on_update,
-- one more write of the row. A random value, not a counter, so that a user erased and imported
-- again under the same id never repeats a version an isolate may still hold; 53 bits of it
-- (`random() >> 11`), so that JavaScript's numbers hold it exactly.
ALTER TABLE `users` ADD `version` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
DROP TRIGGER `users_parts_on_insert`;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_insert` AFTER INSERT ON `users`
BEGIN
  UPDATE `users` SET `version` = random() >> 11, `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = NEW.`id`;
END;
--> statement-breakpoint
DROP TRIGGER `users_parts_on_emails_insert`;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_emails_insert` AFTER INSERT ON `user_emails`
BEGIN
  UPDATE `users` SET `version` = random() >> 11, `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = NEW.`user_id`;
END;
--> statement-breakpoint
DROP TRIGGER `users_parts_on_emails_delete`;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_emails_delete` AFTER DELETE ON `user_emails`
BEGIN
  UPDATE `users` SET `version` = random() >> 11, `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = OLD.`user_id`;
END;
--> statement-breakpoint
DROP TRIGGER `users_parts_on_emails_update`;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_emails_update` AFTER UPDATE ON `user_emails`
BEGIN
  UPDATE `users` SET `version` = random() >> 11, `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` IN (OLD.`user_id`, NEW.`user_id`);
END;
--> statement-breakpoint
DROP TRIGGER `users_parts_on_phone_numbers_insert`;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_phone_numbers_insert` AFTER INSERT ON `user_phone_numbers`
BEGIN
  UPDATE `users` SET `version` = random() >> 11, `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = NEW.`user_id`;
END;
--> statement-breakpoint
DROP TRIGGER `users_parts_on_phone_numbers_delete`;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_phone_numbers_delete` AFTER DELETE ON `user_phone_numbers`
BEGIN
  UPDATE `users` SET `version` = random() >> 11, `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = OLD.`user_id`;
END;
--> statement-breakpoint
DROP TRIGGER `users_parts_on_phone_numbers_update`;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_phone_numbers_update` AFTER UPDATE ON `user_phone_numbers`
BEGIN
  UPDATE `users` SET `version` = random() >> 11, `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` IN (OLD.`user_id`, NEW.`user_id`);
END;
--> statement-breakpoint
DROP TRIGGER `users_parts_on_addresses_insert`;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_addresses_insert` AFTER INSERT ON `user_addresses`
BEGIN
  UPDATE `users` SET `version` = random() >> 11, `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = NEW.`user_id`;
END;
--> statement-breakpoint
DROP TRIGGER `users_parts_on_addresses_delete`;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_addresses_delete` AFTER DELETE ON `user_addresses`
BEGIN
  UPDATE `users` SET `version` = random() >> 11, `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = OLD.`user_id`;
END;
--> statement-breakpoint
DROP TRIGGER `users_parts_on_addresses_update`;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_addresses_update` AFTER UPDATE ON `user_addresses`
BEGIN
  UPDATE `users` SET `version` = random() >> 11, `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` IN (OLD.`user_id`, NEW.`user_id`);
END;
--> statement-breakpoint
DROP TRIGGER `users_parts_on_accounts_insert`;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_accounts_insert` AFTER INSERT ON `user_accounts`
BEGIN
  UPDATE `users` SET `version` = random() >> 11, `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = NEW.`user_id`;
END;
--> statement-breakpoint
DROP TRIGGER `users_parts_on_accounts_delete`;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_accounts_delete` AFTER DELETE ON `user_accounts`
BEGIN
  UPDATE `users` SET `version` = random() >> 11, `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = OLD.`user_id`;
END;
--> statement-breakpoint
DROP TRIGGER `users_parts_on_accounts_update`;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_accounts_update` AFTER UPDATE ON `user_accounts`
BEGIN
  UPDATE `users` SET `version` = random() >> 11, `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` IN (OLD.`user_id`, NEW.`user_id`);
END;
--> statement-breakpoint
DROP TRIGGER `users_parts_on_connections_insert`;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_connections_insert` AFTER INSERT ON `user_clients`
BEGIN
  UPDATE `users` SET `version` = random() >> 11, `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = NEW.`user_id`;
END;
--> statement-breakpoint
DROP TRIGGER `users_parts_on_connections_delete`;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_connections_delete` AFTER DELETE ON `user_clients`
BEGIN
  UPDATE `users` SET `version` = random() >> 11, `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = OLD.`user_id`;
END;
--> statement-breakpoint
DROP TRIGGER `users_parts_on_connections_update`;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_connections_update` AFTER UPDATE OF `client_id`, `merchant_id`, `user_id` ON `user_clients`
BEGIN
  UPDATE `users` SET `version` = random() >> 11, `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` IN (OLD.`user_id`, NEW.`user_id`);
END;
--> statement-breakpoint
DROP TRIGGER `users_parts_on_request`;
--> statement-breakpoint
CREATE TRIGGER `users_parts_on_request` AFTER UPDATE OF `parts` ON `users` WHEN NEW.`parts` = 'copy'
BEGIN
  UPDATE `users` SET `version` = random() >> 11, `parts` = json_object(
    'emails', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_emails` WHERE `user_id` = `users`.`id`),
    'phoneNumbers', (SELECT json_group_array(json_object('id', `id`, 'value', `value`, 'type', `type`, 'primary', `is_primary`, 'verified', `verified`) ORDER BY `id`) FROM `user_phone_numbers` WHERE `user_id` = `users`.`id`),
    'addresses', (SELECT json_group_array(json_object('id', `id`, 'type', `type`, 'formatted', `formatted`, 'streetAddress', `street_address`, 'postalCode', `postal_code`, 'locality', `locality`, 'region', `region`, 'country', `country`) ORDER BY `type`, `id`) FROM `user_addresses` WHERE `user_id` = `users`.`id`),
    'accounts', (SELECT json_group_array(json_object('id', `id`, 'domain', `domain`, 'accountUserId', `account_user_id`, 'username', `username`) ORDER BY `id`) FROM `user_accounts` WHERE `user_id` = `users`.`id`),
    'connections', (SELECT json_group_array(json_object('clientId', `client_id`, 'merchantId', `merchant_id`) ORDER BY `merchant_id`, `client_id`) FROM `user_clients` WHERE `user_id` = `users`.`id`)
  )
  WHERE `users`.`id` = NEW.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `users_version_on_update` AFTER UPDATE ON `users` WHEN NEW.`version` IS OLD.`version`
BEGIN
  UPDATE `users` SET `version` = random() >> 11 WHERE `id` = NEW.`id`;
END;
