B
attn_scaleJó5@