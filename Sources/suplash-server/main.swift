print("suplash-server")
