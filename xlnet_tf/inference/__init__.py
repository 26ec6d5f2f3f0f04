"""Inference: the library of the entry points that apply a trained model to text without
training it (experiments/ parses the flags and calls these).

`embedding` (`xlnet-embed`): texts of any length to vectors, with a pretrained model
directory or its encoder export.
"""
