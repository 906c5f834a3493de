from docpub.cli import main

main()
