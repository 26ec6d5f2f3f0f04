"""XLNet models: the encoder plus a head, one module per head with its spec (`head_spec`:
what a fine-tuned model directory records), and the losses."""
