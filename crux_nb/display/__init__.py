"""Static HTML reprs (CSS only, no JavaScript, no random ids)."""
