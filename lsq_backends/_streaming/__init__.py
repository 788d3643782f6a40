"""Out-of-core fits: row chunks accumulated, merged and solved at the end."""
