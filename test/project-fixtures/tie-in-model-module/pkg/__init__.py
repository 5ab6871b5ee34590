from .blocks import Decoder
