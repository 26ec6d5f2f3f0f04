"""XLNet networks: the encoder (`xlnet_encoder.XLNetEncoder`) and `document_reader` (a
document of any length read segment by segment through the encoder's memory)."""
