B
mask_valueJÿÿÿ