Bextj
locationweights.binj
offset0x4j
length-1p