-- 0003: TOTP multi-factor (factors, recovery codes, challenges), identity policy, SCIM directories.

-- == mfa ==
-- (tables of TOTP factors, recovery codes, login/enrollment challenges and the identity policy)

-- == scim ==
-- (tables of SCIM directories and the users they provision)
