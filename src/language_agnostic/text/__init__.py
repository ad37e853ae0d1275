"""Text derivations: slot masking, template pairs, negative pools. Nothing here knows about Kedro."""
