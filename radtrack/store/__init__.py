"""Store stage: the store's layout (schema), spool intake and shipping, tracking, sync."""
