"""Generated MBL parser (ANTLR 4.13.2); regenerate with scripts/gen-parser."""
