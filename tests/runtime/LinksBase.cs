// LinksBase: a persistent class whose subclasses live in another assembly (Links.cs):
// a restore of a snapshot with its class index knows them from it; one of an old
// snapshot cannot see them from here, makes objects of this class early, and their
// records replace them (sp-restore.c, sp_mono_class_has_subclasses).
using SPersistence;

[SPersistent] public class Part { [SPersistentField] public int Id; }
